"""A faithful stand-in of Pupil Capture's plugin environment (its ``plugin`` module, ``g_pool``,
the IPC publisher and the world loop that publishes ``events``)."""
