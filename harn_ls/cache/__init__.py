"""harn-ls's own cache (never Harn's state): rows, parts, tail, recall-index restore, fact spans, checkpoint history."""
