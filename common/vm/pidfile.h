/* SPDX-License-Identifier: GPL-2.0-or-later */
#pragma once
/* The pid files of a guest's host processes: core/pidfile.h. */
#include "core/pidfile.h"

/* qemu's, written by the prolog once libvirt has started it. */
#define QEMU_PIDFILE "qemu.pid"
