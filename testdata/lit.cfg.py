# lit configuration for aotc's text tests (golden IR, CLI, error cases).
import os

import lit.formats

config.name = "aotc"
config.test_format = lit.formats.ShTest(execute_external=True)
config.suffixes = [".ir", ".test"]
config.excludes = ["fx", "onnx", "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py.in", "inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.aotc_binary_dir, "testdata")

config.environment["PATH"] = os.pathsep.join(
    [config.aotc_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ.get("PATH", ""))])
config.substitutions.append(("%python", "/usr/bin/python3"))
config.substitutions.append(("%srcroot", config.aotc_source_dir))
config.substitutions.append(("%fx", os.path.join(config.aotc_source_dir, "testdata", "fx")))
if config.has_gpu:
    config.available_features.add("gpu")
