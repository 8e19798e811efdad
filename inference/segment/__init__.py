"""Segment one: a segmentation model's class for every pixel of one image."""
