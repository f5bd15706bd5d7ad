// Placeholder until the first operator unit test lands (issue #10).
