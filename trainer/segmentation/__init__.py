"""Semantic segmentation's data side, torch-free: label images read as
classes (palette indices, gray levels, or colours named by a colour map;
``labels``), paired with their images in the folders layout or Pascal
VOC's (``pairs``), and stored as one mask a stored image, placed exactly
as its pixels (``targets``)."""
