//go:build race

package rawread

// raceEnabled is true under the race detector.
const raceEnabled = true
