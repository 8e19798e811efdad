"""Instance segmentation's data, torch-free: each object's mask and class
(``targets``), read from COCO JSON annotations or Pascal VOC's
``SegmentationObject`` label images (``sources``)."""
