"""The ``cluster`` part: node, accelerator, fabrics, GPU count, storage, reliability and power.

Explicit field > the preset the scenario names (``cluster.node``, ``cluster.accelerator``, a fabric key) >
the table's default (``solvers.inputs.fields``), each choice written to the assumptions ledger.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from solvers import catalog
from solvers.inputs import fields
from solvers.inputs.reader import (
    SCENARIO,
    Assumption,
    Reader,
    join,
    preset_notes,
    read_choices,
    read_numbers,
    read_section,
    resolve_value,
    row_defaults,
    table_default,
    type_name,
)
from solvers.specs import AcceleratorSpec, ClusterSpec, LinkSpec

PATH = "cluster"


@dataclass(frozen=True)
class ClusterParts:
    """What the cluster part resolves to: the spec, its explicit document and the ledger's fields."""

    spec: ClusterSpec
    doc: dict[str, Any]
    ledger: dict[str, Any]


def _accelerator_preset_source(key: str, field: str) -> str:
    return f"accelerator preset '{key}': {catalog.accelerator_entry(key)['sources'][field]}"


ACCELERATOR_PATH = f"{PATH}.accelerator"
_PEAKS_PATH = f"{ACCELERATOR_PATH}.peak_tflops"
_ACCELERATORS = {key: catalog.accelerator_entry(key) for key in catalog.ACCELERATORS}
# The entries each accelerator preset writes for the values it gives and for its peaks (``preset_notes``).
_ACCELERATOR_NOTES = preset_notes(ACCELERATOR_PATH, _ACCELERATORS, _accelerator_preset_source)
_PEAK_NOTES: dict[str, tuple[Assumption, ...]] = {
    key: tuple(
        Assumption(f"{_PEAKS_PATH}.{prec}", value, "TFLOP/s", _accelerator_preset_source(key, "peak_tflops"))
        for prec, value in sorted(entry["peak_tflops"].items())
    )
    for key, entry in _ACCELERATORS.items()
}


def _parse_accelerator(
    r: Reader, raw: Any, path: str, node_accel: str | None, node_key: str | None
) -> tuple[AcceleratorSpec | None, dict[str, Any], str | None]:
    """Returns the spec, its explicit document and the catalog key it came from (if any)."""
    key: str | None = None
    given: dict[str, Any] = {}
    if raw is None:
        key = node_accel or "h100-sxm"
        src_default = (
            f"node preset '{node_key}'" if node_accel else "convention: NVIDIA H100 SXM when none is named"
        )
        r.note(path, key, "", src_default)
    elif isinstance(raw, str):
        key = r.key(raw, path, catalog.ACCELERATORS, "accelerator")
        if key is None:
            return None, {}, None
        r.note(path, key, "", SCENARIO)
    else:
        mapped = r.mapping(raw, path, fields.TABLE.keys(path))
        if mapped is None:
            return None, {}, None
        given = mapped
        if given.get("preset") is not None:
            key = r.key(given["preset"], join(path, "preset"), catalog.ACCELERATORS, "accelerator")
            if key is None:
                return None, {}, None
    base: dict[str, Any] = catalog.accelerator_entry(key) if key else {}
    nums = read_numbers(r, given, path)
    peaks: dict[str, float] = dict(base.get("peak_tflops", {}))
    peak_source = f"accelerator preset '{key}': {base['sources']['peak_tflops']}" if key else SCENARIO
    if "peak_tflops" in given:
        pk_path = join(path, "peak_tflops")
        pk = r.mapping(given["peak_tflops"], pk_path, fields.TABLE.keys(pk_path))
        if pk is not None:
            for prec, value in pk.items():
                parsed = r.field_number(value, fields.TABLE[join(pk_path, prec)])
                if parsed is not None:
                    peaks[prec] = float(parsed)
        peak_source = SCENARIO if not key else f"{SCENARIO} over accelerator preset '{key}'"
    if not key:
        for field in ("peak_tflops", "hbm_gb", "hbm_tb_s", "tdp_w"):
            if field not in given:
                r.error(join(path, field), "required for a custom accelerator (or give a preset)")
    if "bf16" not in peaks and not any(e.path.startswith(join(path, "peak_tflops")) for e in r.errors):
        r.error(join(path, "peak_tflops.bf16"), "required: mfu_bf16 is reported against the BF16 dense peak")
    if r.failed_under(path):
        return None, {}, None
    # the caveat is about the preset's BF16 and FP8 rates: said while they are in force (a resolved document
    # states them; another FP32 or FP16 peak leaves them as they are)
    catalog_peaks = base.get("peak_tflops", {})
    if base.get("caveat") and all(peaks.get(p) == catalog_peaks.get(p) for p in ("bf16", "fp8")):
        r.warnings.append(f"{path}: {base['caveat']}")

    def psrc(field: str) -> str:
        return _accelerator_preset_source(key or "", field)

    preset_peaks = (
        _PEAK_NOTES.get(key) if key and path == ACCELERATOR_PATH and "peak_tflops" not in given else None
    )
    if preset_peaks is not None:  # the preset's peaks: their entries are made once, at import
        r.assumptions.extend(preset_peaks)
    else:
        for prec, value in sorted(peaks.items()):
            r.note(join(path, f"peak_tflops.{prec}"), value, "TFLOP/s", peak_source)
    noted = _ACCELERATOR_NOTES.get(key, {}) if key and path == ACCELERATOR_PATH else {}
    values: dict[str, float] = {}
    for row in fields.TABLE.numbers(path):  # a preset gives them all; a custom accelerator the table's
        if row.name not in nums and row.name in noted:  # the preset's value: its entry is made at import
            r.assumptions.append(noted[row.name])
            values[row.name] = float(base[row.name])
            continue
        values[row.name] = float(
            resolve_value(
                r,
                path,
                row.name,
                nums,
                preset=base or None,
                preset_source=psrc if key else None,
                default=row.default if row.has_default else None,
                default_source=row.source,
                unit=row.unit,
            )
        )
    name = given.get("name")
    if name is not None and r.text(name, join(path, "name")) is None:
        return None, {}, None
    name = name or (base.get("name") if key else "custom accelerator")
    spec = AcceleratorSpec(
        name=str(name),
        peak_tflops=peaks,
        hbm_gb=values["hbm_gb"],
        hbm_tb_s=values["hbm_tb_s"],
        tdp_w=values["tdp_w"],
        unit_price_usd=values["unit_price_usd"],
        embodied_kgco2e=values["embodied_kgco2e"],
        compute_efficiency=values["compute_efficiency"],
        catalog_key=key,
    )
    # the preset stays in the document, so that solving the resolved document again finds the same family
    preset_key = {"preset": key} if key else {}
    doc = {**preset_key, "name": str(name), "peak_tflops": dict(sorted(peaks.items())), **values}
    return spec, doc, key


def _parse_link(
    r: Reader, raw: Any, path: str, default_key: str, default_source: str
) -> tuple[LinkSpec | None, dict[str, Any]]:
    key: str | None = None
    given: dict[str, Any] = {}
    if raw is None:
        key = default_key
        r.note(path, key, "", default_source)
    elif isinstance(raw, str):
        key = r.key(raw, path, catalog.FABRICS, "fabric")
        if key is None:
            return None, {}
        r.note(path, key, "", SCENARIO)
    else:
        mapped = r.mapping(raw, path, fields.TABLE.keys(path))
        if mapped is None:
            return None, {}
        given = mapped
        if given.get("preset") is not None:
            key = r.key(given["preset"], join(path, "preset"), catalog.FABRICS, "fabric")
            if key is None:
                return None, {}
        elif "bandwidth_gb_s" not in given:
            key = default_key
            r.note(path, key, "", default_source)
    nums = read_numbers(r, given, path)
    if r.failed_under(path):
        return None, {}
    base = catalog.fabric_entry(key) if key else {}
    preset_notes_ = _LINK_NOTES.get((path, key)) if key and not nums else None
    if preset_notes_ is not None:  # the fabric's four entries, made once at import (``_link_notes``)
        r.assumptions.extend(preset_notes_)
        bandwidth, latency = float(base["bandwidth_gb_s"]), float(base["latency_us"])
    else:
        bandwidth, latency = _link_values(r, path, key, nums, default_key, default_source)
    over = float(table_default(r, path, "oversubscription", nums))
    doc: dict[str, Any] = {"bandwidth_gb_s": bandwidth, "latency_us": latency, "oversubscription": over}
    mesh: int | None = None
    if path.endswith("scale_up"):
        value = table_default(r, path, "mesh_gpus", nums)
        if value is not None:  # only a meshed link carries the key, so other documents are unchanged
            mesh = int(value)
            doc["mesh_gpus"] = mesh
    return (
        LinkSpec(bandwidth_gb_s=bandwidth, latency_us=latency, oversubscription=over, mesh_gpus=mesh),
        doc,
    )


def _link_values(
    r: Reader, path: str, key: str | None, nums: dict[str, Any], default_key: str, default_source: str
) -> tuple[float, float]:
    """A link's bandwidth and latency (given > the fabric's > the default fabric's latency), each noted with
    the fabric's nominal rate and achievable factor."""
    base = catalog.fabric_entry(key) if key else {}
    if key:
        src = base["sources"]
        r.note(
            join(path, "nominal_gb_s"),
            base["nominal_gb_s"],
            "GB/s",
            f"fabric '{key}': {src['nominal_gb_s']}",
        )
        r.note(
            join(path, "achievable_factor"),
            base["achievable_factor"],
            "fraction",
            f"fabric '{key}': {src['achievable_factor']}",
        )
    if "bandwidth_gb_s" in nums:
        bandwidth, bw_src = (
            float(nums["bandwidth_gb_s"]),
            f"{SCENARIO} (used as the rate a collective achieves)",
        )
    else:
        bandwidth = float(base["bandwidth_gb_s"])
        bw_src = f"fabric '{key}': nominal x achievable factor"
    r.note(join(path, "bandwidth_gb_s"), bandwidth, "GB/s", bw_src)
    if "latency_us" in nums:
        latency, lat_src = float(nums["latency_us"]), SCENARIO
    elif key:
        latency, lat_src = float(base["latency_us"]), f"fabric '{key}': {base['sources']['latency_us']}"
    else:
        default_base = catalog.fabric_entry(default_key)
        latency = float(default_base["latency_us"])
        lat_src = f"fabric '{default_key}' ({default_source}): {default_base['sources']['latency_us']}"
    r.note(join(path, "latency_us"), latency, "us", lat_src)
    return bandwidth, latency


def _link_notes(path: str, key: str) -> tuple[Assumption, ...]:
    """The entries ``_link_values`` writes for fabric ``key`` at ``path`` when the scenario gives no number."""
    r = Reader()
    _link_values(r, path, key, {}, key, "")
    return tuple(r.assumptions)


# The four entries each fabric writes at each link of the cluster when the scenario gives no number there.
_LINK_NOTES: dict[tuple[str, str], tuple[Assumption, ...]] = {
    (path, key): _link_notes(path, key)
    for path in (f"{PATH}.scale_up", f"{PATH}.scale_out")
    for key in catalog.FABRICS
}


def _node_for_accelerator(key: str | None) -> str | None:
    if key is None:
        return None
    for node_key, node in catalog.NODES.items():
        if node["accelerator"] == key:
            return node_key
    return None


def parse_cluster(r: Reader, raw: Any, path: str = PATH) -> ClusterParts | None:
    given = r.section(raw, path)
    if given is None:
        return None
    node_key: str | None = None
    if given.get("node") is not None:
        node_key = r.key(given["node"], join(path, "node"), catalog.NODES, "node")
        if node_key is None:
            return None
        r.note(join(path, "node"), node_key, "", SCENARIO)
    elif given.get("accelerator") is None:
        node_key = "dgx-h100"
        r.note(
            join(path, "node"),
            node_key,
            "",
            "convention: NVIDIA DGX H100 when neither node nor accelerator is named",
        )
    node = catalog.NODES[node_key] if node_key else None
    accel, accel_doc, accel_key = _parse_accelerator(
        r,
        given.get("accelerator"),
        join(path, "accelerator"),
        node["accelerator"] if node else None,
        node_key,
    )
    if node is None:
        fallback = _node_for_accelerator(accel_key)
        node_src = (
            f"node preset '{fallback}' (the catalog node of this accelerator)"
            if fallback
            else "convention: DGX H100 fabrics for a custom accelerator"
        )
        link_node_key = fallback or "dgx-h100"
        link_node = catalog.NODES[link_node_key]
    else:
        link_node_key, link_node = str(node_key), node
        node_src = f"node preset '{node_key}': {node['sources']['node']}"

    nums = read_numbers(r, given, path)
    scale_up, up_doc = _parse_link(
        r, given.get("scale_up"), join(path, "scale_up"), link_node["scale_up"], node_src
    )
    scale_out, out_doc = _parse_link(
        r, given.get("scale_out"), join(path, "scale_out"), link_node["scale_out"], node_src
    )
    if "gpus_per_node" in nums:
        gpn, gpn_src = int(nums["gpus_per_node"]), SCENARIO
    else:
        gpn, gpn_src = int(link_node["gpus_per_node"]), node_src
    if "gpus" in nums:
        gpus, gpus_src = int(nums["gpus"]), SCENARIO
    else:
        gpus, gpus_src = gpn, "convention: one node when cluster.gpus is not given"
    if ("gpus_per_node" in nums or "gpus" in nums) and gpus % gpn:
        r.error(
            join(path, "gpus"),
            f"must be a multiple of cluster.gpus_per_node (={gpn:,}); set gpus_per_node for a partial node",
        )
    r.note(join(path, "gpus_per_node"), gpn, "", gpn_src)
    if scale_up is not None and scale_up.mesh_gpus is not None and scale_up.mesh_gpus < gpn:
        r.error(
            join(join(path, "scale_up"), "mesh_gpus"),
            f"must be >= cluster.gpus_per_node (={gpn:,}): a node's GPUs lie on one mesh",
        )
    r.note(join(path, "gpus"), gpus, "", gpus_src)
    # The ledger's node is a server: what fails, draws host power and writes a checkpoint shard on its own
    # (a GB200 NVL72 compute tray of 4 GPUs; one server per node for a preset that names none).
    server_gpus = min(int(link_node.get("gpus_per_server", gpn)), gpn)
    server_src = (
        f"node preset '{link_node_key}': {link_node['sources']['server']}" if server_gpus < gpn else ""
    )

    storage = read_section(r, given.get("storage"), join(path, "storage"))
    power = read_section(r, given.get("power"), join(path, "power"))
    rel = parse_reliability(r, given.get("reliability"), join(path, "reliability"), server_gpus, server_src)
    if (
        accel is None
        or scale_up is None
        or scale_out is None
        or storage is None
        or power is None
        or rel is None
    ):
        return None
    if r.failed_under(path):
        return None
    spec = ClusterSpec(
        accelerator=accel, gpus=gpus, gpus_per_node=gpn, scale_up=scale_up, scale_out=scale_out
    )
    doc = {
        "accelerator": accel_doc,
        "gpus": gpus,
        "gpus_per_node": gpn,
        "scale_up": up_doc,
        "scale_out": out_doc,
        "storage": storage,
        "reliability": rel[0],
        "power": power,
    }
    ledger = {
        "gpus": gpus,
        "gpus_per_node": server_gpus,
        "accelerator_tdp_w": accel.tdp_w,
        "accelerator_unit_price_usd": accel.unit_price_usd,
        "accelerator_embodied_kgco2e": accel.embodied_kgco2e,
        "storage_write_gb_s": storage["write_gb_s"],
        "storage_per_writer_gb_s": storage["per_writer_gb_s"],
        "host_w_per_node": power["host_w_per_node"],
        "idle_fraction": power["idle_fraction"],
        **rel[1],
    }
    return ClusterParts(spec=spec, doc=doc, ledger=ledger)


def parse_reliability(
    r: Reader, raw: Any, path: str, gpus_per_node: int, server_source: str = ""
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """The reliability fields; ``gpus_per_node`` is the GPUs of the ledger's node (a server), whose NICs the
    NIC count's default counts, and ``server_source`` says where a server smaller than the node comes from."""
    given = r.section(raw, path)
    if given is None:
        return None
    before = len(r.errors)
    nums = read_numbers(r, given, path)
    others: tuple[float, ...] | None = None
    if "other_mttf_h" in given:
        raw_others = given["other_mttf_h"]
        op = join(path, "other_mttf_h")
        row = fields.TABLE[op]
        if not isinstance(raw_others, list | tuple):
            r.error(op, f"must be a list of MTTFs in hours, got {type_name(raw_others)}")
        elif len(raw_others) > row.max_items:
            r.error(op, f"must have at most {row.max_items:,} entries")
        else:
            parsed = [r.field_number(v, row, f"{op}[{i}]") for i, v in enumerate(raw_others)]
            if all(p is not None for p in parsed):
                others = tuple(float(p) for p in parsed if p is not None)
        if others is not None:
            nums["other_mttf_h"] = others
    read_choices(r, given, path, nums)
    if len(r.errors) > before:
        return None
    doc = row_defaults(r, path, nums)
    if doc["nics_per_node"] is None:
        doc["nics_per_node"] = gpus_per_node
        key = join(path, "nics_per_node")
        notes = r.assumptions
        for i in range(len(notes) - 1, -1, -1):  # noted in the loop above: among the last entries
            if notes[i].key == key:  # the default's None becomes the count it stands for
                notes[i] = notes[i]._replace(value=gpus_per_node)
                if server_source:
                    notes[i] = notes[i]._replace(
                        source=f"{notes[i].source}, of a server of {gpus_per_node} GPUs ({server_source})"
                    )
                break
    doc["other_mttf_h"] = [float(v) for v in doc["other_mttf_h"]]
    for field in ("gpu_mttf_h", "nic_mttf_h", "psu_mttf_h", "restart_s"):
        doc[field] = float(doc[field])
    doc["psus_per_node"] = int(doc["psus_per_node"])
    doc["nics_per_node"] = int(doc["nics_per_node"])
    ledger = {
        "gpu_mttf_h": doc["gpu_mttf_h"],
        "nic_mttf_h": doc["nic_mttf_h"],
        "psu_mttf_h": doc["psu_mttf_h"],
        "nics_per_node": doc["nics_per_node"],
        "psus_per_node": doc["psus_per_node"],
        "other_mttf_h": tuple(doc["other_mttf_h"]),
        "restart_s": doc["restart_s"],
        "mtbf_convention": str(doc["mtbf_convention"]),
    }
    return doc, ledger
