#!/usr/bin/python3
"""validate_json.py SCHEMA FILE... : validates each JSON FILE against SCHEMA
with Debian's python3-jsonschema; prints one line per file, exits 1 on any
failure."""
import json
import sys

import jsonschema


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    with open(sys.argv[1]) as f:
        schema = json.load(f)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    validator = cls(schema)
    bad = 0
    for path in sys.argv[2:]:
        with open(path) as f:
            doc = json.load(f)
        errors = sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
        if errors:
            bad += 1
            for e in errors[:5]:
                loc = "/".join(str(p) for p in e.absolute_path)
                print(f"{path}: /{loc}: {e.message[:300]}")
        else:
            print(f"{path}: valid")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
