"""common.findings: the one finding constructor."""

import pytest

from ansible_collections.ncclkit.cluster.plugins.module_utils.common.findings import finding


def test_a_finding_has_every_field_and_keeps_the_makers_extras():
    made = finding("port_blocked", "error", "node2 drops 29500", "open it", host="node2", rank=1,
                   evidence=("line",), source="node1", target="node2")
    assert made == {"code": "port_blocked", "severity": "error", "host": "node2", "rank": 1,
                    "cause": "node2 drops 29500", "fix": "open it", "confidence": "high",
                    "evidence": ["line"], "consequence_of": None, "source": "node1", "target": "node2"}


@pytest.mark.parametrize("field", ["severity", "confidence"])
def test_a_word_outside_the_vocabulary_is_refused_naming_it(field):
    with pytest.raises(ValueError, match=f"finding x: {field} 'fatal'"):
        finding("x", **{"severity": "error", field: "fatal"}, cause="c", fix="f")
