"""Object detection's data side, torch-free: reading boxes from the label
formats people bring (KITTI, Pascal VOC, COCO, YOLO), with every problem
reported by file, line and reason, moving boxes exactly with the resizes a
dataset build makes, storing them (``targets``) and exporting a stored
dataset to COCO (``coco_export``)."""
