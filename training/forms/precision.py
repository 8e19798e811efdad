"""How the device does the arithmetic: the precision, the memory format and
whether the network is compiled."""

from __future__ import annotations

from django import forms

PRECISIONS = [("fp32", "fp32 (full precision)"),
              ("tf32", "tf32 (fp32 with TensorFloat-32 matrix maths on recent GPUs)"),
              ("bf16", "mixed precision bf16 (fastest on recent GPUs)"),
              ("fp16", "mixed precision fp16 (with loss scaling)")]


class PrecisionFields(forms.Form):
    precision = forms.ChoiceField(choices=PRECISIONS, initial="fp32", label="Precision")
    channels_last = forms.BooleanField(required=False, initial=False, label="Channels-last memory format")
    compile = forms.BooleanField(required=False, initial=False, label="Compile the network (torch.compile)")
