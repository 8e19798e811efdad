"""Pretrained models: weights to fine-tune a new model from, made from a
trained model's snapshot or uploaded (a model archive, or a plain PyTorch
state dict for a standard network). Each is a job of kind ``pretrained``
whose run (``trainer/pretrained_job.py``) checks the weights against their
network and keeps them; the New model page offers the done ones as a
network."""
