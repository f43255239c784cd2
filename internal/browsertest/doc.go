// Package browsertest lets tests look at the pictures weft writes (SVG
// charts, the HTML graph view) the way a person would: rendered by headless
// Chromium, then checked by counting the pixels of a colour. A test calling
// it is skipped where Chromium is not installed; CI installs it.
package browsertest
