// Placeholder until this file's first commit (issue #10).
