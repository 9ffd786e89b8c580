"""`robosim recover DIR`: save the recordings a killed run left behind (robosim.record.recover)."""
from __future__ import annotations

import argparse

from robosim.cli.options import fail


def cmd_recover(args: argparse.Namespace) -> int:
    from robosim.record.recover import recover

    try:
        report = recover(args.directory, force=args.force)
    except (ValueError, TypeError) as err:
        return fail("recover", err)
    except OSError as err:
        return fail("recover", err, status=1)
    print(report.summary())
    return 1 if report.errors else 0


def add_recover_command(sub) -> None:
    p = sub.add_parser("recover", help="save the recordings a killed run left behind in a directory",
                       description="Merge each leftover trajectory parts directory (.NAME.<random>.parts) "
                                   "into NAME (or NAME-recovered-K.h5) and rename each playable leftover "
                                   "partial mp4; a partial HDF5 of a killed `demos render` and a partial "
                                   "dataset directory of a killed `demos export` are renamed into place when "
                                   "complete, else removed and named; leftovers of a still-running process "
                                   "are skipped. A lost or "
                                   "damaged owner.json is worked around (episode files carry their own header); "
                                   "a damaged episode file is reported and kept, the others recovered. Exit "
                                   "status 1 when writing a recovered file failed.")
    p.add_argument("directory", help="directory the killed run wrote to")
    p.add_argument("--force", action="store_true", help="also take leftovers whose process still runs")
    p.set_defaults(func=cmd_recover)
