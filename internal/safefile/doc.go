// Package safefile holds weft's file-safety rules, so every tool reads and
// writes user files the same way:
//
//   - Inputs are opened without blocking and must be regular files
//     (OpenRegular), or are read with a size bound (ReadLimited): a FIFO
//     never hangs a tool and /dev/zero never exhausts memory.
//   - An output is never one of the inputs (same inode, through any link),
//     never a directory, socket or block device. A character device such
//     as /dev/null, or a pipe with a reader (/dev/stdout in a pipeline), is
//     written in place; anything else
//     is written to a unique temporary file beside the target, synced and
//     renamed over it, so the target is either the old file or the whole
//     new one (Create, WriteFile).
//   - Space is reserved before a file is written through a mapping
//     (Reserve), so a full disk is an error, not a SIGBUS.
//   - Every temporary file is registered until it is committed or
//     removed; RemoveTemps deletes the ones left when a tool is
//     interrupted.
//
// docs/decisions.md ("File safety") records the rules for later features.
package safefile
