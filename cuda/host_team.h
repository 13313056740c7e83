/*
 * host_team.h
 *	  A small team of host threads that the GPU engine keeps for the host side
 *	  of a batch: planning (cache lookups, checks of inline lists) and copies
 *	  between pinned staging and the callers' arrays.  At a batch of 4096 real
 *	  queries these took two thirds of the time on one thread (bench/results/
 *	  gpu.md), while the device waited.
 *
 *	  run(n, fn) calls fn(0) .. fn(n-1), spread over the team and the calling
 *	  thread, and returns when all are done.  Threads start on first use; when
 *	  none can be started, the caller does every part itself.
 */
#ifndef GPUIDX_HOST_TEAM_H
#define GPUIDX_HOST_TEAM_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

class host_team
{
public:
	explicit host_team(uint32_t size) : size_(size) {}

	~host_team()
	{
		{
			std::lock_guard<std::mutex> lk(m_);
			stop_ = true;
		}
		work_cv_.notify_all();
		for (std::thread &t : threads_)
			t.join();
	}

	host_team(const host_team &) = delete;
	host_team &operator=(const host_team &) = delete;

	/* threads that may take parts, the caller included */
	uint32_t size() const { return size_; }

	void run(uint32_t nparts, const std::function<void(uint32_t)> &fn)
	{
		if (nparts <= 1 || size_ <= 1 || !start_threads())
		{
			for (uint32_t p = 0; p < nparts; p++)
				fn(p);
			return;
		}
		{
			/* no worker is active between runs: each run waits for them all below */
			std::lock_guard<std::mutex> lk(m_);

			job_ = &fn;
			nparts_ = nparts;
			next_.store(0);
			done_.store(0);
			generation_++;
		}
		work_cv_.notify_all();
		take_parts(&fn, nparts);
		{
			std::unique_lock<std::mutex> lk(m_);

			done_cv_.wait(lk, [&] { return done_.load() == nparts && active_ == 0; });
			job_ = nullptr;
		}
	}

private:
	bool start_threads()
	{
		if (!threads_.empty())
			return true;
		try
		{
			for (uint32_t i = 1; i < size_; i++)
				threads_.emplace_back(&host_team::worker, this);
		}
		catch (const std::system_error &)
		{
			/* fewer threads than asked: the parts are shared among those that started */
		}
		return !threads_.empty();
	}

	void take_parts(const std::function<void(uint32_t)> *fn, uint32_t nparts)
	{
		uint32_t	p;

		while ((p = next_.fetch_add(1)) < nparts)
		{
			(*fn)(p);
			if (done_.fetch_add(1) + 1 == nparts)
			{
				std::lock_guard<std::mutex> lk(m_);

				done_cv_.notify_all();
			}
		}
	}

	void worker()
	{
		uint64_t	seen = 0;
		std::unique_lock<std::mutex> lk(m_);

		for (;;)
		{
			const std::function<void(uint32_t)> *fn;
			uint32_t	nparts;

			work_cv_.wait(lk, [&] { return stop_ || generation_ != seen; });
			if (stop_)
				return;
			seen = generation_;
			if (job_ == nullptr)
				continue;		/* woke after that run ended */
			fn = job_;
			nparts = nparts_;
			active_++;
			lk.unlock();
			take_parts(fn, nparts);
			lk.lock();
			if (--active_ == 0)
				done_cv_.notify_all();
		}
	}

	uint32_t	size_;
	std::vector<std::thread> threads_;
	std::mutex	m_;
	std::condition_variable work_cv_;
	std::condition_variable done_cv_;
	bool		stop_ = false;
	uint64_t	generation_ = 0;
	const std::function<void(uint32_t)> *job_ = nullptr;
	uint32_t	nparts_ = 0;
	uint32_t	active_ = 0;
	std::atomic<uint32_t> next_{0};
	std::atomic<uint32_t> done_{0};
};

#endif							/* GPUIDX_HOST_TEAM_H */
