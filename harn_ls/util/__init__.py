"""Small pure helpers every layer may use: safe reads, text positions, progress, platform facilities."""
