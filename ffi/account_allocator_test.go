package ffi_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/nativepool/nativepool/ffi"
	"github.com/nativepool/nativepool/ffi/internal/ctest"
	"github.com/nativepool/nativepool/pool"
)

// An allocator over an operator's account charges every buffer to the
// account: what the account uses is what is allocated, the reservation
// holds that plus the account's slack, and most buffers never reach the
// pool.
func TestAccountAllocatorChargesTheAccount(t *testing.T) {
	const q = 64 << 10
	p := pool.NewGreedy(1 << 30)
	acct := pool.NewAccount(pool.NewConsumer("op").Register(p), q)
	a := ffi.NewAccountAllocator(nil, acct)
	assert.Same(t, acct.Reservation(), a.Reservation())

	var bufs [][]byte
	for i := range 100 {
		bufs = append(bufs, a.Allocate(1000+i))
		assert.Equal(t, a.Allocated(), acct.Used())
		assert.Equal(t, acct.Used()+acct.Slack(), p.Reserved())
	}
	assert.LessOrEqual(t, p.Reserved(), a.Allocated()+q, "the pool is asked in quanta")
	for _, b := range bufs {
		a.Free(b)
	}
	assert.Zero(t, a.Allocated())
	assert.Zero(t, acct.Used())
	assert.LessOrEqual(t, acct.Slack(), int64(2*q), "freed bytes stay as bounded slack")

	rb := int64Batch(a, 0, 10)
	out, sc := ctest.NewArray(), ctest.NewSchema()
	defer ctest.Free(out)
	defer ctest.Free(sc)
	require.ErrorIs(t, a.ExportRecordBatch(rb, out, sc), ffi.ErrAccountCharged)
	rb.Release()

	require.NoError(t, a.Close())
	acct.Close()
	assert.Zero(t, p.Reserved())
}

// A refusal of the account is the allocator's refusal, and changes
// nothing.
func TestAccountAllocatorRefusesWhatTheAccountRefuses(t *testing.T) {
	p := pool.NewGreedy(10 << 10)
	acct := pool.NewAccount(pool.NewConsumer("op").Register(p), 4<<10)
	a := ffi.NewAccountAllocator(nil, acct)
	b := a.Allocate(6 << 10)
	err := ffi.Catch(func() error { a.Allocate(8 << 10); return nil })
	require.ErrorIs(t, err, pool.ErrResourcesExhausted)
	assert.Equal(t, int64(6<<10), a.Allocated())
	assert.Equal(t, a.Allocated(), acct.Used())
	a.Free(b)
	require.NoError(t, a.Close())
	acct.Close()
	assert.Zero(t, p.Reserved())
}
