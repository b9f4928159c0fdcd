//! The machine on Windows: CPU time per logical processor
//! (NtQuerySystemInformation(SystemProcessorPerformanceInformation), the current processor
//! group, i.e. up to 64 cores), memory (GlobalMemoryStatusEx), traffic per interface
//! (GetIfTable2, filter interfaces left out) and TCP sockets (GetExtendedTcpTable, without
//! owners: under wine the table with owners costs seconds).

use std::io;
use std::time::Instant;

use windows_sys::Wdk::System::SystemInformation::{
    NtQuerySystemInformation, SystemProcessorPerformanceInformation,
};
use windows_sys::Win32::NetworkManagement::IpHelper::{FreeMibTable, GetIfTable2, MIB_IF_TABLE2};
use windows_sys::Win32::System::SystemInformation::{GlobalMemoryStatusEx, MEMORYSTATUSEX};
use windows_sys::Win32::System::WindowsProgramming::SYSTEM_PROCESSOR_PERFORMANCE_INFORMATION;

use super::tcp;
use super::Scratch;
use crate::host::{CpuStat, CpuTimes, HostReading, NetDev};
use crate::os::{state, HostLevels};

/// Reads the counters; `Err` only if the CPU times cannot be read.
pub(crate) fn read_host(_s: &mut Scratch) -> io::Result<HostReading> {
    let cpu = cpu_times()?;
    Ok(HostReading {
        at: Instant::now(),
        cpu,
        net: interfaces(),
    })
}

/// Memory and TCP sockets now (0 where a call fails).
pub(crate) fn host_levels(s: &mut Scratch) -> HostLevels {
    let mut m = MEMORYSTATUSEX {
        dwLength: size_of::<MEMORYSTATUSEX>() as u32,
        ..Default::default()
    };
    // SAFETY: m is a writable MEMORYSTATUSEX with dwLength set, as the call requires.
    let (mem_total, mem_available) = if unsafe { GlobalMemoryStatusEx(&mut m) } != 0 {
        (m.ullTotalPhys, m.ullAvailPhys)
    } else {
        (0, 0)
    };
    let (mut inuse, mut time_wait) = (0, 0);
    let mut rows = Vec::new();
    if tcp::rows_without_owners(&mut s.buf, &mut rows).is_ok() {
        time_wait = rows.iter().filter(|r| r.state == state::TIME_WAIT).count() as u64;
        inuse = rows.len() as u64 - time_wait;
    }
    HostLevels {
        mem_total,
        mem_available,
        tcp_inuse: inuse,
        tcp_time_wait: time_wait,
    }
}

/// Busy and total time per logical processor (100 ns): kernel time includes idle time.
fn cpu_times() -> io::Result<CpuStat> {
    const N: usize = 64;
    let mut per = [SYSTEM_PROCESSOR_PERFORMANCE_INFORMATION::default(); N];
    let bytes = size_of_val(&per) as u32;
    let mut got = 0u32;
    // SAFETY: per is writable for `bytes` bytes; got is a writable u32.
    let status = unsafe {
        NtQuerySystemInformation(
            SystemProcessorPerformanceInformation,
            per.as_mut_ptr().cast(),
            bytes,
            &mut got,
        )
    };
    if status < 0 {
        return Err(io::Error::other(format!("status {status:#x}")));
    }
    let n = (got as usize / size_of::<SYSTEM_PROCESSOR_PERFORMANCE_INFORMATION>()).min(N);
    if n == 0 {
        return Err(io::Error::other("no processor listed"));
    }
    let mut out = CpuStat::default();
    for (i, p) in per[..n].iter().enumerate() {
        let t = core_times(p.IdleTime, p.KernelTime, p.UserTime);
        out.all.busy += t.busy;
        out.all.total += t.total;
        out.cores.push((i as u32, t));
    }
    Ok(out)
}

fn core_times(idle: i64, kernel: i64, user: i64) -> CpuTimes {
    let (idle, kernel, user) = (idle.max(0) as u64, kernel.max(0) as u64, user.max(0) as u64);
    let total = kernel + user;
    CpuTimes {
        busy: total.saturating_sub(idle),
        total,
    }
}

/// Every interface but the filter ones (one per filter driver, duplicating real ones), named
/// by its alias; an alias seen twice gets `#index`.
fn interfaces() -> Vec<NetDev> {
    let mut table: *mut MIB_IF_TABLE2 = std::ptr::null_mut();
    // SAFETY: table is a writable pointer, set by the call on success.
    if unsafe { GetIfTable2(&mut table) } != 0 || table.is_null() {
        return Vec::new();
    }
    // SAFETY: on success table points to NumEntries rows, valid until FreeMibTable.
    let rows = unsafe {
        let n = (*table).NumEntries as usize;
        std::slice::from_raw_parts(
            std::ptr::addr_of!((*table).Table)
                .cast::<windows_sys::Win32::NetworkManagement::IpHelper::MIB_IF_ROW2>(),
            n,
        )
    };
    let mut out: Vec<NetDev> = Vec::new();
    for row in rows {
        // InterfaceAndOperStatusFlags: bit 1 is FilterInterface.
        if row.InterfaceAndOperStatusFlags._bitfield & 0b10 != 0 {
            continue;
        }
        let len = row
            .Alias
            .iter()
            .position(|&c| c == 0)
            .unwrap_or(row.Alias.len());
        let mut name = String::from_utf16_lossy(&row.Alias[..len]);
        if out.iter().any(|d| d.name == name) {
            name = format!("{name}#{}", row.InterfaceIndex);
        }
        out.push(NetDev {
            name,
            rx_bytes: row.InOctets,
            rx_packets: row.InUcastPkts + row.InNUcastPkts,
            tx_bytes: row.OutOctets,
            tx_packets: row.OutUcastPkts + row.OutNUcastPkts,
        });
    }
    // SAFETY: table came from GetIfTable2 and is freed once; rows is not used after.
    unsafe { FreeMibTable(table.cast()) };
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_is_kernel_plus_user_minus_idle() {
        assert_eq!(
            core_times(600, 800, 200),
            CpuTimes {
                busy: 400,
                total: 1000
            }
        );
        assert_eq!(core_times(900, 800, 0).busy, 0, "never negative");
    }

    #[test]
    fn reads_this_machine() {
        let mut s = Scratch::default();
        let a = read_host(&mut s).unwrap();
        assert!(
            !a.cpu.cores.is_empty() && a.cpu.all.total > 0,
            "{:?}",
            a.cpu
        );
        let l = host_levels(&mut s);
        assert!(l.mem_total > 0 && l.mem_available <= l.mem_total, "{l:?}");
    }
}
