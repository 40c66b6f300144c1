// Package capabilities reads which Linux capabilities this process's
// bounding set holds, by the names an OCI runtime spec gives them: make
// kind says which root lacks, and boundedrunc leaves them out of specs.
package capabilities

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// names are the kernel's capabilities by number, up to CAP_CHECKPOINT_RESTORE.
var names = strings.Fields(`CHOWN DAC_OVERRIDE DAC_READ_SEARCH FOWNER FSETID KILL SETGID SETUID SETPCAP
	LINUX_IMMUTABLE NET_BIND_SERVICE NET_BROADCAST NET_ADMIN NET_RAW IPC_LOCK IPC_OWNER SYS_MODULE SYS_RAWIO
	SYS_CHROOT SYS_PTRACE SYS_PACCT SYS_ADMIN SYS_BOOT SYS_NICE SYS_RESOURCE SYS_TIME SYS_TTY_CONFIG MKNOD LEASE
	AUDIT_WRITE AUDIT_CONTROL SETFCAP MAC_OVERRIDE MAC_ADMIN SYSLOG WAKE_ALARM BLOCK_SUSPEND AUDIT_READ PERFMON BPF
	CHECKPOINT_RESTORE`)

// Bounding is the capabilities this process may hold, as CAP_ names.
func Bounding() (map[string]bool, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if hex, ok := strings.CutPrefix(line, "CapBnd:"); ok {
			bits, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				return nil, fmt.Errorf("CapBnd in /proc/self/status: %w", err)
			}
			held := map[string]bool{}
			for i, name := range names {
				if bits>>i&1 == 1 {
					held["CAP_"+name] = true
				}
			}
			return held, nil
		}
	}
	return nil, fmt.Errorf("no CapBnd in /proc/self/status")
}

// Lacking is the capabilities the kernel has that this process's bounding
// set does not hold, nil if it holds them all or cannot tell.
func Lacking() []string {
	held, err := Bounding()
	if err != nil {
		return nil
	}
	var lacking []string
	for _, name := range names {
		if !held["CAP_"+name] {
			lacking = append(lacking, "CAP_"+name)
		}
	}
	return lacking
}
