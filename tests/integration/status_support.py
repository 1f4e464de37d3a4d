"""What the status tests share: a strict parser of Prometheus's text
exposition format 0.0.4, and the regular expression readers of nginx's
stub_status page use.

Python stdlib only.
"""
import math
import re

# nginx's stub_status page as its readers take it (nginx-prometheus-exporter,
# telegraf, collectd, munin read these lines, these spaces).
STUB_STATUS = re.compile(
    r"\AActive connections: (\d+) \n"
    r"server accepts handled requests\n"
    r" (\d+) (\d+) (\d+) \n"
    r"Reading: (\d+) Writing: (\d+) Waiting: (\d+) \n")

_NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
_SAMPLE = re.compile(rf"({_NAME})(\{{(.*)\}})? (\S+)( -?\d+)?\Z")
_TYPES = ("counter", "gauge", "histogram", "summary", "untyped")


class ExpositionError(AssertionError):
    pass


def _labels(text, line_no):
    """`k="v",...` into a dict; values unescaped (\\\\, \\", \\n only)."""
    labels = {}
    i = 0
    while i < len(text):
        m = re.match(rf"({_LABEL})=\"", text[i:])
        if not m:
            raise ExpositionError(f"line {line_no}: bad label at {text[i:]!r}")
        name = m.group(1)
        i += m.end()
        value = []
        while True:
            if i >= len(text):
                raise ExpositionError(f"line {line_no}: unterminated label value")
            c = text[i]
            if c == "\\":
                nxt = text[i + 1:i + 2]
                if nxt not in ("\\", '"', "n"):
                    raise ExpositionError(f"line {line_no}: bad escape \\{nxt}")
                value.append("\n" if nxt == "n" else nxt)
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise ExpositionError(f"line {line_no}: newline in a label value")
            else:
                value.append(c)
                i += 1
        if name in labels:
            raise ExpositionError(f"line {line_no}: label {name} twice")
        labels[name] = "".join(value)
        if i < len(text):
            if text[i] != ",":
                raise ExpositionError(f"line {line_no}: expected ',' in labels")
            i += 1
            if i == len(text):
                break  # a trailing comma is allowed
    return labels


def _value(text, line_no):
    if text in ("NaN", "+Inf", "-Inf"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        raise ExpositionError(f"line {line_no}: bad value {text!r}")
    return float(text)


def parse_exposition(text):
    """Families as {name: {"type", "help", "samples": [(name, labels, value)]}},
    refusing what the format does not allow: a TYPE after its samples or
    twice, a family's samples not together, a sample name that is not its
    family's (histograms: _bucket, _sum, _count), a series twice, a counter
    not named *_total, a histogram whose buckets shrink, lack le="+Inf" or
    disagree with _count."""
    if not text.endswith("\n"):
        raise ExpositionError("the exposition does not end with a newline")
    families = {}
    seen_series = set()
    current = None  # the family whose samples come now
    closed = set()  # families whose samples are over

    def family_of(sample_name):
        for suffix in ("_bucket", "_sum", "_count"):
            base = sample_name[:-len(suffix)] if sample_name.endswith(suffix) else None
            if base and families.get(base, {}).get("type") == "histogram":
                return base
        return sample_name

    for line_no, line in enumerate(text[:-1].split("\n"), 1):
        if not line:
            continue
        if line.startswith("#"):
            m = re.fullmatch(rf"# (HELP|TYPE) ({_NAME}) (.*)", line)
            if not m:
                continue  # a comment
            kind, name, rest = m.groups()
            fam = families.setdefault(name, {"type": None, "help": None, "samples": []})
            if kind == "TYPE":
                if rest not in _TYPES:
                    raise ExpositionError(f"line {line_no}: unknown type {rest!r}")
                if fam["type"] is not None:
                    raise ExpositionError(f"line {line_no}: TYPE of {name} twice")
                if fam["samples"]:
                    raise ExpositionError(f"line {line_no}: TYPE of {name} after its samples")
                fam["type"] = rest
            else:
                if fam["help"] is not None:
                    raise ExpositionError(f"line {line_no}: HELP of {name} twice")
                fam["help"] = rest
            continue
        m = _SAMPLE.match(line)
        if not m:
            raise ExpositionError(f"line {line_no}: not a sample: {line!r}")
        name, _, label_text, value_text, _ = m.groups()
        labels = _labels(label_text or "", line_no)
        value = _value(value_text, line_no)
        base = family_of(name)
        fam = families.setdefault(base, {"type": "untyped", "help": None, "samples": []})
        if base != current:
            if base in closed:
                raise ExpositionError(f"line {line_no}: samples of {base} not together")
            if current is not None:
                closed.add(current)
            current = base
        series = (name, tuple(sorted(labels.items())))
        if series in seen_series:
            raise ExpositionError(f"line {line_no}: series {series} twice")
        seen_series.add(series)
        if fam["type"] == "histogram" and name == base:
            raise ExpositionError(f"line {line_no}: histogram {base} sample without suffix")
        if name.endswith("_bucket") and fam["type"] == "histogram" and "le" not in labels:
            raise ExpositionError(f"line {line_no}: bucket without le")
        fam["samples"].append((name, labels, value))

    for name, fam in families.items():
        if fam["type"] == "counter" and not name.endswith("_total"):
            raise ExpositionError(f"counter {name} is not named *_total")
        if fam["type"] == "counter":
            for _, _, v in fam["samples"]:
                if v < 0 or math.isnan(v):
                    raise ExpositionError(f"counter {name} has value {v}")
        if fam["type"] == "histogram":
            _check_histogram(name, fam["samples"])
    return families


def _check_histogram(name, samples):
    groups = {}
    for sample_name, labels, value in samples:
        key = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
        g = groups.setdefault(key, {"buckets": [], "count": None, "sum": None})
        if sample_name == name + "_bucket":
            g["buckets"].append((float(labels["le"].replace("Inf", "inf")), value))
        elif sample_name == name + "_count":
            g["count"] = value
        elif sample_name == name + "_sum":
            g["sum"] = value
    for key, g in groups.items():
        les = [le for le, _ in g["buckets"]]
        if les != sorted(les) or not les or les[-1] != math.inf:
            raise ExpositionError(f"histogram {name}{key}: buckets out of order or no +Inf")
        counts = [v for _, v in g["buckets"]]
        if counts != sorted(counts):
            raise ExpositionError(f"histogram {name}{key}: buckets not cumulative")
        if g["count"] != counts[-1] or g["sum"] is None:
            raise ExpositionError(f"histogram {name}{key}: _count or _sum wrong")


def total(families, name, **match):
    """The sum of family `name`'s samples whose labels include `match`."""
    return sum(v for n, labels, v in families[name]["samples"]
               if n == name and all(labels.get(k) == w for k, w in match.items()))
