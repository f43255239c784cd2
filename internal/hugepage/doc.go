// Package hugepage asks the kernel for transparent huge pages behind the
// memory that decode streams once per token: mapped model files and
// repacked weights. With 4 KiB pages every page costs a TLB miss (a
// two-level page walk under virtualisation); measured on the 2-core VM,
// decode over huge pages was about 10% faster. Advice only: a kernel that
// refuses it changes nothing. WEFT_NO_HUGEPAGES=1 turns it off.
package hugepage
