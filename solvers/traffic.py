"""Traffic shape of a training step on the wire (seed 004 §5.6).

Training traffic is on at line rate or off: every GPU computes, then its NIC sends its share of an exchange
at full rate, then goes quiet, all GPUs in lockstep (HPN Figure 2). Three figures describe it:

* ``bytes_per_gpu`` per dimension: the mean bytes each GPU sends per step (``solvers.exchanges``);
* the **NIC duty cycle**: the share of a step the busiest NIC spends sending,
  ``sum(nic_bytes) / NIC rate / step_s`` (capped at 1: exchanges beyond the step cannot happen);
* the **burst**: the largest back-to-back transfer on one NIC. When two such bursts meet on one link the
  link receives twice what it carries for the burst's duration, and the excess is
  ``burst duration x line rate`` bytes, which a switch must buffer or pause (seed 004 §5.6: a 50 ms burst at
  400 Gb/s is 2.5 GB against tens of MB of switch buffer).
"""

from __future__ import annotations

from solvers.compute import Num, clip, where

GB = 1e9


def nic_busy_s(*, nic_bytes: Num, nic_gb_s: float) -> Num:
    """Seconds a NIC spends sending ``nic_bytes`` at its achieved rate. Example: 12.6 GB at 50 GB/s = 0.25 s."""
    return nic_bytes / (nic_gb_s * GB)


def nic_duty_cycle(*, nic_bytes: Num, nic_gb_s: float, step_s: Num) -> Num:
    """Share of the step the NIC sends: ``min(1, nic_bytes / rate / step_s)``.

    Example: 12.6 GB on a 50 GB/s NIC in a 6.5 s step -> 0.25 / 6.5 = 3.9%.
    """
    busy = nic_busy_s(nic_bytes=nic_bytes, nic_gb_s=nic_gb_s)
    return clip(busy / where(step_s > 0.0, step_s, 1.0), 0.0, 1.0)


def burst_bytes_from_duration(*, burst_s: Num, line_rate_gb_s: float) -> Num:
    """Excess bytes when two line-rate bursts share one link: ``burst duration x line rate``.

    Example (seed 004 §5.6): 50 ms at 400 Gb/s (50 GB/s) = 0.05 x 50e9 = 2.5 GB.
    """
    return burst_s * line_rate_gb_s * GB


def burst_duration_s(*, burst_bytes: Num, line_rate_gb_s: float) -> Num:
    """How long the largest burst holds the NIC at line rate: ``burst_bytes / rate``."""
    return burst_bytes / (line_rate_gb_s * GB)
