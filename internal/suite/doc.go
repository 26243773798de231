// Package suite has no code: its tests check that the three places that
// say how sfgen's test suite runs say the same thing. They are the
// README's and CONTRIBUTING.md's test command, .ci/run (which runs the
// suite twice: with throwaway clusters, and the way docker-compose.yml's
// test service does, against DATABASE_URL with no server binaries; then on
// other PostgreSQL majors), and docker-compose.yml; each with the same
// -timeout, longer than Go's default of 10 minutes a package.
package suite
