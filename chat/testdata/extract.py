#!/usr/bin/env python3
"""Extracts the test cases of llama.cpp's tests/test-chat-template.cpp into
conformance.json (see README.md). It reads the C++ source as data: string
literals, true/false and braces, nothing else.

usage: extract.py path/to/test-chat-template.cpp > conformance.json
"""
import json
import sys

FIELDS = ["name", "template", "expected", "expected_jinja", "bos", "eos", "supported_with_jinja"]
ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0"}


def tokens(src):
    """Yields ("str", text), ("bool", v), ("{",), ("}",), (",",) outside comments."""
    i, n = 0, len(src)
    while i < n:
        c = src[i]
        if src.startswith("//", i):
            i = src.index("\n", i)
        elif src.startswith("/*", i):
            i = src.index("*/", i) + 2
        elif c == '"' or src.startswith('u8"', i):
            i = src.index('"', i) + 1
            out = []
            while src[i] != '"':
                if src[i] == "\\":
                    out.append(ESCAPES[src[i + 1]])
                    i += 2
                else:
                    out.append(src[i])
                    i += 1
            i += 1
            yield ("str", "".join(out))
        elif src.startswith("true", i) or src.startswith("false", i):
            v = src.startswith("true", i)
            i += 4 if v else 5
            yield ("bool", v)
        elif c in "{},":
            i += 1
            yield (c,)
        else:
            i += 1


def cases(src):
    start = src.index("std::vector<TestCase> test_cases {")
    end = src.index("std::vector<char> formatted_chat", start)
    body = src[start + len("std::vector<TestCase> test_cases "):end]
    depth, cur, vals, out = 0, None, [], []
    for t in tokens(body):
        if t[0] == "{":
            depth += 1
            if depth == 2:
                vals, cur = [], None
        elif t[0] == "}":
            if depth == 2:
                if cur is not None:
                    vals.append(cur)
                out.append(vals)
            depth -= 1
        elif t[0] == "," and depth == 2:
            vals.append(cur)
            cur = None
        elif depth == 2:
            if t[0] == "str" and isinstance(cur, str):
                cur += t[1]  # adjacent literals concatenate
            else:
                cur = t[1]
    res = []
    for vals in out:
        c = {"bos": "", "eos": "", "supported_with_jinja": True}
        c.update(zip(FIELDS, vals))
        res.append(c)
    return res


if __name__ == "__main__":
    src = open(sys.argv[1], encoding="utf-8").read()
    json.dump(cases(src), sys.stdout, ensure_ascii=False, indent=1)
    sys.stdout.write("\n")
