"""The streaming job: the Spark source (one poll per micro-batch), the stateful operator, the batch
handler that wires progress to the sinks, and the job's start-up. Driver and executor parts say which they are."""
