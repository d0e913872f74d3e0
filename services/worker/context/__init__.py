"""What the model sees: token accounting, compression layers, the view builder."""
