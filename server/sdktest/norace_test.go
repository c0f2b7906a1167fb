//go:build !race

package sdktest

const raceEnabled = false
