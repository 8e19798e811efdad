"""What is done to the images before the network sees them: mean
subtraction, crops and random changes in training, and the views averaged
at test time."""

from __future__ import annotations

from typing import Any

from django import forms

from .floatfield import float_field

MEAN_CHOICES = [("image", "Subtract the mean image"), ("pixel", "Subtract the mean pixel"), ("none", "None")]
FLIP_CHOICES = [("none", "None"), ("horizontal", "Horizontal"), ("vertical", "Vertical"), ("both", "Both"),
                ("alternating", "Horizontal, alternating by epoch: each image mirrored every other epoch (airbench)")]
TTA_LEVELS = [("none", "None"), ("mirror", "Mirror: the image and its mirror image, averaged"),
              ("mirror_translate", "Mirror and translate: six views weighted as airbench does")]


class AugmentationFields(forms.Form):
    mean = forms.ChoiceField(choices=MEAN_CHOICES, initial="image", label="Mean subtraction")
    crop = forms.IntegerField(required=False, min_value=1, label="Crop size",
                              help_text="Random crops of this side for training, centre crops for validation. Blank: none.")
    translate = forms.IntegerField(min_value=0, max_value=1024, initial=0, label="Random translation (pixels)")
    flip = forms.ChoiceField(choices=FLIP_CHOICES, initial="none", label="Random flips")
    rotation = float_field("Random rotation (± degrees)", 0.0, maximum=180)
    scale = float_field("Random zoom (± fraction)", 0.0, maximum=0.9)
    noise = float_field("Gaussian noise (std, pixels in 0..1)", 0.0, maximum=1)
    color_jitter = float_field("Colour jitter (± fraction)", 0.0, maximum=1)
    tta = forms.ChoiceField(choices=TTA_LEVELS, initial="none", label="Test-time augmentation",
                            help_text="Validation and test logits averaged over views of each image.")

    # The chosen dataset's manifest (``ScheduleForm.clean_dataset``).
    dataset_info: dict[str, Any] | None

    def check_crop(self, data: dict[str, Any]) -> None:
        crop, info = data.get("crop"), self.dataset_info
        if crop and info and crop > min(info["image_shape"][:2]):
            height, width = info["image_shape"][:2]
            self.add_error("crop", f"The crop must fit in the dataset's {width}×{height} images.")
