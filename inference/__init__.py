"""Using a trained model, one sub-package per feature:

- ``classify``: Classify one, a model's answer for one image from the warm
  model server (its page and API);
- ``evaluate``: the evaluation job kind (Evaluate on a split, Classify many
  on a list, a server folder or an archive, Compare on a group page), its
  report page and API;
- ``export``: model archives, which run without this app.

What they share stays here: ``trained`` (a trained model read without
torch, and ``Unusable``), ``snapshots`` and ``snapshot_requests`` (the
snapshot a request names; the pretrained app's too), the
``model_actions`` template tags (a model's page: each feature's action, or
why its task does not offer it), and the app's registrations (``apps``),
routes (``urls``) and API description (``openapi``). The templates and
scripts stay in the app's ``templates/inference/`` and
``static/inference/``, where Django finds them."""
