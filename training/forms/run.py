"""How often a run validates and takes snapshots, how many snapshots it
keeps, and its random seed."""

from __future__ import annotations

import secrets

from django import forms

from .floatfield import float_field

SEED_LIMIT = 2**31 - 1
# Each snapshot is a file as large as the model: ten an epoch at most, so
# that one run cannot fill the disk (or spend its time) writing them.
SNAPSHOT_INTERVAL_MIN = 0.1


class RunFields(forms.Form):
    val_interval = float_field("Validation interval (epochs)", 1.0, minimum=0.01)
    snapshot_interval = float_field("Snapshot interval (epochs)", 1.0, minimum=SNAPSHOT_INTERVAL_MIN, error_messages={
        "min_value": f"Snapshots are taken at most {round(1 / SNAPSHOT_INTERVAL_MIN)} times an epoch: "
                     f"the interval is at least {SNAPSHOT_INTERVAL_MIN} epochs."})
    keep_snapshots = forms.IntegerField(required=False, min_value=0, initial=3, label="Keep the last N snapshots and the best",
                                        help_text="Older snapshots are deleted as training goes; 0 or blank keeps them all.")
    seed = forms.IntegerField(required=False, min_value=0, max_value=SEED_LIMIT, label="Random seed",
                              help_text="Blank for a random one, recorded so that the run can be repeated.")

    def chosen_seed(self) -> int:
        """The seed given, or a random one drawn now (params record it)."""
        seed = self.cleaned_data["seed"]
        return seed if seed is not None else secrets.randbelow(SEED_LIMIT + 1)
