"""Using a trained model: load a snapshot (``load_model``), prepare an image
exactly as training did (``preprocess``), classify one or many images,
evaluate on a dataset split, look inside the network and see where it
looked, or find a detector's boxes on an image (``detect``). Torch-side only; the web app reaches it through the model server
(``trainer.modelserver``) or a job."""

from trainer.inference.classify import classify, evaluate, evaluate_split, logits
from trainer.inference.errors import InferenceError, ModelNotFound
from trainer.inference.model import Loaded, load_model
from trainer.inference.preprocess import Prepared, preprocess

__all__ = ["InferenceError", "Loaded", "ModelNotFound", "Prepared", "classify", "evaluate", "evaluate_split",
           "load_model", "logits", "preprocess"]
