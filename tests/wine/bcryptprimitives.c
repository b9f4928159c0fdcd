/* wine 8 (Debian 12's) has no bcryptprimitives.dll, where Rust's standard library (1.78 and
 * later) takes its random numbers from: ProcessPrng. Windows 10 and later have it. The wine
 * tests put this stand-in next to barrage.exe; it draws from RtlGenRandom (advapi32's
 * SystemFunction036), which wine has. Never shipped: only the tests build it. */
#include <windows.h>

BOOLEAN WINAPI SystemFunction036(PVOID buffer, ULONG length);

BOOL WINAPI ProcessPrng(PBYTE data, SIZE_T len) {
    while (len > 0) {
        ULONG chunk = len > 0x10000000 ? 0x10000000 : (ULONG)len;
        if (!SystemFunction036(data, chunk)) return FALSE;
        data += chunk;
        len -= chunk;
    }
    return TRUE;
}
