#!/bin/sh
# etc/cli_filter.lua run by Lua 5.1, the Lua of Debian's cli_filter/lua,
# with Slurm's `slurm` table stood in for: a VM job gets enforce-binding
# added to --gres-flags (a comma list from Slurm 23.11 on) and keeps the
# user's other flags, without a second enforce-binding; disable-binding,
# which contradicts it, goes; a job without --vm-image is left alone.
# Slurm 22.05 accepts one value only: there the user's flags can only be
# "unset", disable-binding or enforce-binding, and the result is the one
# value enforce-binding.
set -eu
src=$(cd "$(dirname "$0")/../.." && pwd)
lua=$(command -v lua5.1 || true)
if [ -z "$lua" ]; then
	echo "SKIP: no lua5.1 (apt-get install lua5.1)"
	exit 77
fi
unset SLURM_VM_IMAGE SLURM_VM_CPUS SLURM_VM_MEM
"$lua" - "$src/etc/cli_filter.lua" <<'LUA'
slurm = { SUCCESS = 0, ERROR = -1, log_error = function() end }
dofile(arg[1])
local fails = 0

-- The flags a job ends up with: @image nil for a job without --vm-image,
-- @flags what the user gave (22.05 and later say "unset" for none).
local function filtered(image, flags)
	local options = { ["gres-flags"] = flags, spank = { spank_vm = {} } }
	options.spank.spank_vm["vm-image"] = image
	local rc = slurm_cli_pre_submit(options, 0)
	assert(rc == slurm.SUCCESS, "pre_submit refused")
	return options["gres-flags"]
end

local function check(what, got, want)
	if got == want then
		print("ok: " .. what)
	else
		print(string.format("FAIL: %s: %s, not %s", what, tostring(got),
			tostring(want)))
		fails = fails + 1
	end
end

check("VM job without flags (unset)", filtered("img", "unset"),
	"enforce-binding")
check("VM job without flags (nil)", filtered("img", nil), "enforce-binding")
check("VM job: the user's other flag kept",
	filtered("img", "one-task-per-sharing"),
	"one-task-per-sharing,enforce-binding")
check("VM job: the user's other flags kept, in order",
	filtered("img", "allow-task-sharing,multiple-tasks-per-sharing"),
	"allow-task-sharing,multiple-tasks-per-sharing,enforce-binding")
check("VM job: enforce-binding already there",
	filtered("img", "enforce-binding"), "enforce-binding")
check("VM job: enforce-binding among others, not doubled",
	filtered("img", "Enforce-Binding,one-task-per-sharing"),
	"Enforce-Binding,one-task-per-sharing")
check("VM job: disable-binding (22.05's other value) replaced",
	filtered("img", "disable-binding"), "enforce-binding")
check("VM job: disable-binding dropped, the rest kept",
	filtered("img", "disable-binding,allow-task-sharing"),
	"allow-task-sharing,enforce-binding")
check("job without --vm-image untouched", filtered(nil, "disable-binding"),
	"disable-binding")
check("job without --vm-image, no flags: untouched", filtered(nil, "unset"),
	"unset")
os.exit(fails == 0 and 0 or 1)
LUA
