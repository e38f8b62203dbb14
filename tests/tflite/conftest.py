import pytest

pytest.importorskip("tflite", reason="pymli.tflite needs the 'tflite' package (pip install 'tflite>=2.18')")
pytest.importorskip("flatbuffers", reason="pymli.tflite needs 'flatbuffers>=23'")
