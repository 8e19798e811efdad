"""Object detection's data side, torch-free: reading boxes from the label
formats people bring (KITTI, Pascal VOC, COCO, YOLO), with every problem
reported by file, line and reason, and moving boxes exactly with the
resizes a dataset build makes."""
