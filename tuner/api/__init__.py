"""rnntune's study service: REST API, sensitivity analysis and plots, checkpoint download, web view."""

from tuner.api.app import create_app
from tuner.api.settings import ApiSettings

__all__ = ["ApiSettings", "create_app"]
