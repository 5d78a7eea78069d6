"""Training: settings, batching, the objective, distributed processes and the trainer loop."""
