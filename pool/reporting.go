package pool

// This file holds the error-returning forms of Grow, Shrink, Free and Close.
//
// The Pool interface keeps DataFusion's shape: Grow and Shrink return
// nothing. A unified pool therefore only logs and counts what goes wrong
// upstream during them: an Acquire that fails inside Grow (the bytes become
// overcommit), a Release that fails inside Shrink (the bytes stay owed and
// go back at the next sweep). A caller that must hand that failure on (the
// JNI bridge rethrows the Java exception an upcall raised, from the native
// call that raised it) uses the *Reporting forms of Reservation, which reach
// the pool through reporter. The bytes move exactly as in the plain forms;
// only the failure is returned instead of dropped.

// reporter is a Pool whose Grow and Shrink can return the upstream failure
// that the Pool forms only log and count. The unified pools implement it;
// the decorators forward it to the pool they wrap. A pool that does not
// implement it has no upstream to fail, and its plain forms are used.
type reporter interface {
	growReporting(r *Reservation, n int64) error
	shrinkReporting(r *Reservation, n int64) error
}

// growIn is p.Grow(r, n), returning what went wrong upstream if p can say.
func growIn(p Pool, r *Reservation, n int64) error {
	if rp, ok := p.(reporter); ok {
		return rp.growReporting(r, n)
	}
	p.Grow(r, n)
	return nil
}

// shrinkIn is p.Shrink(r, n), returning what went wrong upstream if p can
// say.
func shrinkIn(p Pool, r *Reservation, n int64) error {
	if rp, ok := p.(reporter); ok {
		return rp.shrinkReporting(r, n)
	}
	p.Shrink(r, n)
	return nil
}

func (t *TrackConsumers) growReporting(r *Reservation, n int64) error {
	err := growIn(t.inner, r, n)
	t.entry(r).add(n)
	t.afterIncrease()
	return err
}

func (t *TrackConsumers) shrinkReporting(r *Reservation, n int64) error {
	err := shrinkIn(t.inner, r, n)
	t.entry(r).sub(n)
	t.afterDecrease()
	return err
}

func (p *loggingPool) growReporting(r *Reservation, n int64) error {
	p.logGrow(r, n)
	err := growIn(p.inner, r, n)
	p.afterIncrease()
	return err
}

func (p *loggingPool) shrinkReporting(r *Reservation, n int64) error {
	p.logShrink(r, n)
	err := shrinkIn(p.inner, r, n)
	p.afterDecrease()
	return err
}

var (
	_ reporter = (*unifiedPool)(nil)
	_ reporter = (*TrackConsumers)(nil)
	_ reporter = (*loggingPool)(nil)
)
