package httpapi

// Costly is the costly route option, for HandleForTest.
var Costly = costly
