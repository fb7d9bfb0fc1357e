--[[
slurm-vm cli_filter: submit-time policy for VM jobs (sbatch, salloc, srun).

Install beside slurm.conf as cli_filter.lua and set
    CliFilterPlugins=cli_filter/lua
in slurm.conf. It acts only on jobs with --vm-image (or SLURM_VM_IMAGE):

  * --gres-flags=enforce-binding: a VM needs its cores next to its GPUs and
    InfiniBand VFs; without it cons_tres treats locality as a preference only,
    and SPANK plugins cannot set it. Added to the user's other flags (a comma
    list from Slurm 23.11 on), replacing disable-binding.
  * refuses what cannot work, with the reason, before a job exists:
    heterogeneous jobs, --vm-cpus above the CPUs the job asks per node,
    --vm-mem above the memory the job asks per node.

Whole cores come from SelectTypeParameters=CR_Core_Memory (or CR_Socket*),
which `slurm-vm check-config` verifies. The prolog checks everything again.
]]

local PREFIX = "slurm-vm: "

local function spank_opt(options, name)
	local spank = options.spank
	local ours = spank and spank["spank_vm"]
	local v = ours and ours[name]
	if v == nil or v == "" then
		v = os.getenv("SLURM_VM_" .. name:gsub("^vm%-", ""):gsub("-", "_"):upper())
	end
	if v == "" then
		return nil
	end
	return v
end

-- "512", "512M", "8G", "1T" -> MiB; nil for anything else.
local function to_mib(s)
	if s == nil then
		return nil
	end
	local n, unit = tostring(s):match("^(%d+)([MmGgTt]?)$")
	if n == nil then
		return nil
	end
	n = tonumber(n)
	unit = unit:upper()
	if unit == "G" then
		n = n * 1024
	elseif unit == "T" then
		n = n * 1024 * 1024
	end
	return n
end

local function num(options, name)
	local v = tonumber(options[name])
	if v == nil or v <= 0 or v >= 0xfffffffe then
		return nil
	end
	return v
end

-- The CPUs the job asks for on each node, when the options say it.
local function cpus_per_node(options)
	local cpt = num(options, "cpus-per-task") or 1
	local tpn = num(options, "ntasks-per-node")
	if tpn then
		return tpn * cpt
	end
	local ntasks = num(options, "ntasks")
	local nodes = tonumber(tostring(options["nodes"] or ""):match("^(%d+)"))
	if ntasks and options["ntasks"] ~= nil and nodes and nodes > 0 then
		return math.ceil(ntasks / nodes) * cpt
	end
	return cpt
end

local function mem_per_node(options, cpus)
	local mem = to_mib(options["mem"])
	if mem and mem > 0 then
		return mem
	end
	local per_cpu = to_mib(options["mem-per-cpu"])
	if per_cpu and per_cpu > 0 then
		return per_cpu * cpus
	end
	return nil
end

-- --gres-flags with enforce-binding added. From Slurm 23.11 on the value
-- is a comma list: the user's other flags stay, enforce-binding is not
-- doubled, and disable-binding, which Slurm refuses beside it, goes.
-- Slurm 22.05 takes one value only, and there "unset", disable-binding
-- and enforce-binding are all it can hold: the result is enforce-binding.
local function with_enforce_binding(flags)
	local kept = {}
	for flag in tostring(flags or ""):gmatch("[^,]+") do
		local f = flag:lower()
		if f == "enforce-binding" then
			return flags
		end
		if f ~= "unset" and f ~= "disable-binding" then
			kept[#kept + 1] = flag
		end
	end
	kept[#kept + 1] = "enforce-binding"
	return table.concat(kept, ",")
end

local function refuse(msg)
	slurm.log_error(PREFIX .. msg)
	return slurm.ERROR
end

function slurm_cli_setup_defaults(options, early_pass)
	return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, offset)
	local image = spank_opt(options, "vm-image")
	if image == nil then
		return slurm.SUCCESS
	end
	if offset > 0 then
		return refuse("--vm-image cannot be used with heterogeneous jobs; submit each component as its own job")
	end

	local cpus = cpus_per_node(options)
	local vm_cpus = tonumber(spank_opt(options, "vm-cpus"))
	if vm_cpus and vm_cpus > cpus then
		return refuse(string.format(
			"--vm-cpus=%d is more than the %d CPUs per node this job asks for; lower --vm-cpus or ask for more CPUs (-c, --ntasks-per-node)",
			vm_cpus, cpus))
	end
	local vm_mem = spank_opt(options, "vm-mem")
	local mem = mem_per_node(options, cpus)
	if vm_mem and mem and (to_mib(vm_mem) or 0) > mem then
		return refuse(string.format(
			"--vm-mem=%s is more than the %dM per node this job asks for; lower --vm-mem or raise --mem",
			vm_mem, mem))
	end

	options["gres-flags"] = with_enforce_binding(options["gres-flags"])
	return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, jobid, stepid)
	return slurm.SUCCESS
end
