"""The service's parts, one mixin each, composed by :class:`hippocampus.service.Hippocampus`.

Each mixin holds the methods of one job and descends from
:class:`~hippocampus.services.core.ServiceCore`, which declares the state they share and
the helpers they all use. Callers use ``Hippocampus``; these classes are not
built on their own.
"""
