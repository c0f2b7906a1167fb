// Package examples holds graphs taken from real use cases, one
// sub-package each, registered in cmd/studio so they appear in the Studio.
// Every example tells its story in its package comment and has tests that
// run it end to end without network access.
package examples
