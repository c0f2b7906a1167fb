//go:build race

package sdktest

// raceEnabled builds the Studio under test with the race detector when the
// test itself runs with it, so a data race the scenarios provoke in the
// server fails the test.
const raceEnabled = true
