package static

import "embed"

// FS holds the assets, served under /static/.
//
//go:embed studio.css studio.js checkpoints.js chat.js promptcache.js graphview.js forms.js favicon.svg
var FS embed.FS
