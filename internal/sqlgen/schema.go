package sqlgen

// DefaultSchema is the schema sfgen installs into when none is given.
const DefaultSchema = "public"
