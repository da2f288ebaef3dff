      -- ---- KIND_SLIDING_WINDOW's retry (sliding_window.lua, quota.lua) ----
      -- The estimate only falls as time passes: the first elapsed e that admits cost under
      -- `bound` in this window (previous·(window - e) <= room·window, with room = bound -
      -- current - cost), else in the next (where current becomes previous), else after both
      -- (sliding_first_fit). Sets retry; `room` is spent.
      local allowed_at = start + 2 * window
      local fit = window
      if room >= 0 then
        if previous == 0 then
          fit = 0
        else
          local scaled = room * window
          fit = window - (scaled - scaled % previous) / previous
          if fit < 0 then fit = 0 end
        end
      end
      if fit < window then
        allowed_at = start + fit
      else
        room = bound - cost
        fit = 0
        if current > 0 then
          local scaled = room * window
          fit = window - (scaled - scaled % current) / current
          if fit < 0 then fit = 0 end
        end
        if fit < window then allowed_at = start + window + fit end
      end
      if allowed_at <= now then allowed_at = now + 1 end
      retry = allowed_at - now
