// Package suite has no code: its tests check that the three places that
// say how sfgen's test suite runs say the same thing. They are the
// README's test command, .ci/run (which runs the suite twice: with
// throwaway clusters, and the way docker-compose.yml's test service does,
// against DATABASE_URL with no server binaries), and docker-compose.yml.
package suite
