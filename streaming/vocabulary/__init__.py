"""The shared vocabulary, at the bottom of the layers: snapshot tables, replica states, config keys,
errors and their exit codes, client config, Kafka's limits, defaults. Imports nothing of this project
above it."""
