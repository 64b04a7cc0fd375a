// Package ports is the edge's vocabulary: the records that cross it, the error
// kinds, and the interfaces the cores need from the outside world.
//
// It holds no behaviour and imports nothing but the standard library, so every
// core and every adapter can depend on it without depending on each other.
package ports
