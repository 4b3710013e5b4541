"""The communication of an algorithm or kernel as data: transmissions grouped into phases."""

from commcost.schedule.schedule import Schedule, ScheduleBuilder, SendMode, SizeUnit

__all__ = ["Schedule", "ScheduleBuilder", "SendMode", "SizeUnit"]
