// Package studio assembles Superstep Studio so a program can serve its own
// graphs with one call: Serve(ctx, Config{...}). It opens the database pool
// when a DATABASE_URL is configured (in-memory backends otherwise), applies
// migrations, builds the backends, and mounts the router from package
// handlers.
//
// It is wiring only: no request handling and no SQL of its own.
package studio
