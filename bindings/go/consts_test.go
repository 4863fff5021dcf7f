package redlock

import (
	"strings"
	"testing"
)

// The package's constants are the header's (cgo, compile time); these tests
// check them against the library loaded at run time, and that every code of
// the library's error table has a constant here (one source of truth: a
// header, a library and a binding that drift apart fail here).

var errnoConsts = map[string]Errno{
	"EINVAL": EINVAL, "ENOMEM": ENOMEM, "ELOCKED": ELOCKED, "ENOQUORUM": ENOQUORUM,
	"EEXPIRED": EEXPIRED, "ELOST": ELOST, "ETIMEDOUT": ETIMEDOUT, "ECANCELED": ECANCELED,
	"ECLOSED": ECLOSED, "EWOULDBLOCK": EWOULDBLOCK, "EIO": EIO, "ENOTSUP": ENOTSUP,
	"EFORKED": EFORKED,
}

func TestConstantsMatchLibrary(t *testing.T) {
	for name, e := range errnoConsts {
		v, ok := libConstant("REDLOCK_" + name)
		if !ok || v != int64(e) {
			t.Errorf("%s = %d here, library: %d (known %v)", name, e, v, ok)
		}
	}
	others := map[string]int64{
		"LOG_DEBUG": LogDebug, "LOG_INFO": LogInfo, "LOG_WARN": LogWarn, "LOG_ERROR": LogError,
		"MAX_NODES": MaxNodes, "MAX_RESOURCE_LEN": MaxResourceLen, "MAX_PREFIX_LEN": MaxPrefixLen,
		"MAX_MANY": MaxMany, "MAX_SEM_LIMIT": MaxSemLimit,
		"STATS_PROMETHEUS": StatsPrometheus, "STATS_JSON": StatsJSON,
		"MAX_OWNER": MaxOwner, "LOST_MAX_HOLD": LostMaxHold,
		"INSPECT_LOCK": int64(InspectLock), "INSPECT_SEMAPHORE": int64(InspectSemaphore),
		"INSPECT_RWLOCK": int64(InspectRWLock), "INSPECT_ELECTION": int64(InspectElection),
		"LEADER_NONE": int64(LeaderNone), "LEADER_HELD": int64(LeaderHeld),
		"LEADER_UNKNOWN": int64(LeaderUnknown),
	}
	for name, want := range others {
		v, ok := libConstant("REDLOCK_" + name)
		if !ok || v != want {
			t.Errorf("%s = %d here, library: %d (known %v)", name, want, v, ok)
		}
	}
	if _, ok := libConstant("REDLOCK_NO_SUCH"); ok {
		t.Error("an unknown constant was found")
	}
}

func TestErrorTableMatchesConstants(t *testing.T) {
	table := ErrorTable()
	if len(table) != len(errnoConsts) {
		t.Fatalf("library has %d error codes, the package %d", len(table), len(errnoConsts))
	}
	for _, info := range table {
		short := strings.TrimPrefix(info.Name, "REDLOCK_")
		e, ok := errnoConsts[short]
		if !ok || e != info.Code {
			t.Errorf("library code %d %s: package constant %v (%v)", info.Code, info.Name, e, ok)
		}
		if info.Code.Name() != info.Name || info.Code.Error() != info.Message || info.Message == "" {
			t.Errorf("%s: name/message %q/%q", info.Name, info.Code.Name(), info.Message)
		}
	}
}

func TestNamesOnTheMasters(t *testing.T) {
	for _, name := range []string{"REDLOCK_RELEASE_CHANNEL_PREFIX", "REDLOCK_FENCE_KEY_PREFIX"} {
		if s, ok := libConstantString(name); !ok || !strings.HasPrefix(s, "__redlock_") {
			t.Errorf("%s = %q (%v)", name, s, ok)
		}
	}
}
