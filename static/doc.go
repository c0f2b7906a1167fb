// Package static embeds the Studio's browser assets: CSS, the small script
// that applies live updates, and vendored libraries with their licences.
// They are served from an embed.FS, so the binary is self-contained.
//
// There is no JavaScript build step; what is here is what the browser gets.
package static
